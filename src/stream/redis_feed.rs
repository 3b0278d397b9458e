//! Changes through Redis, for a fleet: a relay (`dynarelay relay`) reads each table's stream once
//! and appends every change to a Redis stream of that table (`XADD` with a bounded length), and
//! each `serve` instance given the same Redis reads those entries (`XREAD` from the last id it
//! read) instead of the table's stream, handing them to its subscribers as its own reader would.
//!
//! Redis Streams rather than publish/subscribe: an instance whose connection drops reads on from
//! its last id when it is back, so a short outage loses nothing. When the entries after that id
//! are gone (trimmed by the bounded length, or Redis restarted without them), its subscribers are
//! told of a gap, as for records the table's stream trimmed, and resume by cursor. An entry is
//! a change of one item (its keys, old and new images in DynamoDB's typed JSON, and the table
//! stream's sequence number), or a gap the relay saw. Changes published twice (two relays, or a
//! relay that restarted from its last checkpoint) are passed on once, and each item's in its
//! order: a change whose item already had a later one (by the sequence number) is not news.

use std::{num::NonZeroUsize, sync::Arc, time::Duration};

use redis::{
    AsyncCommands, Value,
    aio::MultiplexedConnection,
    streams::{StreamId, StreamMaxlen, StreamRangeReply, StreamReadOptions, StreamReadReply},
};

use super::{
    Change, Event, Origin, StreamSettings,
    outlet::{Backoff, Outlet},
    position::{Mark, Position as Place},
    sequence_after,
    shard_marks::{self, Marks, NewsFrom, Said},
};
use crate::dynamo::{
    Item,
    typed_json::{item_from_json, item_to_json},
};

/// The version of the entries' layout, in each entry's `v`.
const LAYOUT: &str = "1";
/// How long one `XREAD` waits for entries before the reader looks at its subscribers again.
const BLOCK: Duration = Duration::from_millis(1000);
/// Most entries one `XREAD` returns.
const BATCH: usize = 500;
/// Items remembered with the sequence number of their last change passed on, to pass each
/// change on once and in its item's order: two relays publish every change moments apart, and a
/// relay placed late, or restarted from a checkpoint, publishes older changes after newer ones
/// (about 100 bytes an item: under 2 MB per table when full).
const ITEMS: usize = 16_384;
/// Entries a reader starting anew looks at before its start, to know the items' last changes
/// already published (which a relay behind the other may publish again after it starts).
const LOOK_BACK: usize = 1_000;

/// An item's primary key's hash, to remember it by (a collision within [`ITEMS`] items has
/// odds of about one in 2^50): its attributes in name order, each with its typed value.
fn identity(keys: &crate::dynamo::Item) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut names: Vec<&String> = keys.keys().collect();
    names.sort();
    // Seeded the same everywhere: the hash only has to tell keys apart.
    let mut hasher = std::hash::DefaultHasher::new();
    for name in names {
        name.hash(&mut hasher);
        crate::dynamo::typed_json::value_to_json(&keys[name])
            .to_string()
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// The last change passed on of each item remembered: a change is news when its item's last one
/// came before it.
struct Passed(lru::LruCache<u64, String>);

impl Passed {
    fn new() -> Self {
        Self(lru::LruCache::new(
            NonZeroUsize::new(ITEMS).expect("not zero"),
        ))
    }

    /// Whether `change` comes after its item's last one; if so, it becomes the last.
    fn news(&mut self, change: &Change) -> bool {
        let item = identity(&change.keys);
        match self.0.get(&item) {
            Some(last) if !sequence_after(&change.sequence, last) => false,
            _ => {
                self.0.put(item, change.sequence.clone());
                true
            }
        }
    }
}

/// The Redis stream of `table`'s (its full name) changes.
pub fn key(table: &str) -> String {
    format!("dynarelay:changes:{table}")
}

/// The Redis a fleet shares.
#[derive(Clone)]
pub struct RedisFeed {
    client: redis::Client,
    /// The connection this instance's replays share, once made (see [`RedisFeed::shared`]).
    replays: Arc<tokio::sync::Mutex<Option<MultiplexedConnection>>>,
}

impl std::fmt::Debug for RedisFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password.
        f.debug_struct("RedisFeed").finish_non_exhaustive()
    }
}

impl RedisFeed {
    /// The Redis at `url` (`redis://[user:password@]host:port[/db]`, or `rediss://` for TLS,
    /// trusting the system's certificate authorities, or only the one in the PEM file `ca` when
    /// given); nothing is connected yet.
    pub fn new(url: &str, ca: Option<&std::path::Path>) -> anyhow::Result<Self> {
        // The URL may hold a password: only the kind of error is shown.
        let unusable = |err: redis::RedisError| {
            anyhow::anyhow!("the Redis URL is not usable ({:?})", err.kind())
        };
        let client = match ca {
            None => redis::Client::open(url).map_err(unusable)?,
            Some(ca) => {
                if !url.starts_with("rediss://") {
                    anyhow::bail!(
                        "a Redis certificate authority ({}) is for a TLS Redis: its URL starts with rediss://",
                        ca.display()
                    );
                }
                let pem = std::fs::read(ca).map_err(|err| {
                    anyhow::anyhow!(
                        "cannot read the Redis certificate authority {}: {err}",
                        ca.display()
                    )
                })?;
                let certificates = redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                };
                redis::Client::build_with_tls(url, certificates).map_err(unusable)?
            }
        };
        Ok(Self {
            client,
            replays: Arc::default(),
        })
    }

    /// The connection every replay of this instance shares: a multiplexed connection pipelines
    /// their calls (`XRANGE`s and the relays' marks, none of which blocks), so that the storm of
    /// resumed subscriptions that follows an instance's restart (thousands within seconds) makes
    /// one connection to Redis rather than one each, which would fill Redis's queue of
    /// connections to accept and send every replay that waits on it to the table's stream.
    pub(super) async fn shared(&self) -> redis::RedisResult<MultiplexedConnection> {
        let mut replays = self.replays.lock().await;
        if let Some(connection) = &*replays {
            return Ok(connection.clone());
        }
        let connection = self.connect().await?;
        *replays = Some(connection.clone());
        Ok(connection)
    }

    /// After a call on the shared connection failed: the next replay connects again.
    pub(super) async fn shared_failed(&self, err: &redis::RedisError) {
        if err.is_connection_dropped()
            || err.is_io_error()
            || err.is_timeout()
            || err.is_unrecoverable_error()
        {
            *self.replays.lock().await = None;
        }
    }

    /// A connection whose calls may wait as long as a blocking `XREAD`.
    pub(super) async fn connect(&self) -> redis::RedisResult<MultiplexedConnection> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(BLOCK + Duration::from_secs(10)));
        self.client
            .get_multiplexed_async_connection_with_config(&config)
            .await
    }

    /// A publisher of changes, connected.
    pub async fn publisher(&self, max_len: usize) -> redis::RedisResult<Publisher> {
        Ok(Publisher {
            connection: self.connect().await?,
            max_len,
        })
    }
}

/// Appends events to the tables' Redis streams.
pub struct Publisher {
    connection: MultiplexedConnection,
    /// About how many entries each stream keeps (`MAXLEN ~`).
    max_len: usize,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("max_len", &self.max_len)
            .finish_non_exhaustive()
    }
}

impl Publisher {
    /// Appends `event` of `table` (its full name) to the table's Redis stream; its entry id. A
    /// change that names its shard moves the shard's marks with it (see [`shard_marks`]), and
    /// says where the shard's news begins when `from` is given.
    pub async fn publish(
        &mut self,
        table: &str,
        event: &Event,
        from: Option<&NewsFrom>,
    ) -> redis::RedisResult<String> {
        let fields = entry(event);
        if let Event::Change(change) = event
            && let Some(origin) = &change.origin
        {
            let said = Said {
                stream: origin.after.identity(),
                shard: &origin.shard,
                last: Some(&change.sequence),
                from,
            };
            let keys = (key(table), table);
            return shard_marks::publish(
                &mut self.connection,
                (&keys.0, keys.1),
                self.max_len,
                &fields,
                &said,
            )
            .await;
        }
        self.connection
            .xadd_maxlen(key(table), StreamMaxlen::Approx(self.max_len), "*", &fields)
            .await
    }

    /// Writes a shard's marks again (for a Redis that came back without them).
    pub async fn seed(&mut self, table: &str, said: &Said<'_>) -> redis::RedisResult<()> {
        shard_marks::seed(&mut self.connection, table, said).await
    }
}

/// An event as an entry's fields.
fn entry(event: &Event) -> Vec<(&'static str, String)> {
    let mut fields = vec![("v", LAYOUT.to_owned())];
    match event {
        // A place that cannot be continued from is a subscriber's, never published.
        Event::Gap | Event::Expired => fields.push(("kind", "gap".to_owned())),
        Event::Change(change) => {
            fields.push(("kind", "change".to_owned()));
            fields.push(("seq", change.sequence.clone()));
            fields.push(("keys", item_to_json(&change.keys).to_string()));
            if let Some(origin) = &change.origin {
                fields.push(("shard", origin.shard.to_string()));
                fields.push(("stream", shard_marks::hex(&origin.after.identity())));
            }
            for (name, image) in [("old", &change.old), ("new", &change.new)] {
                if let Some(image) = image {
                    fields.push((name, item_to_json(image).to_string()));
                }
            }
        }
    }
    fields
}

/// An entry of `table`'s stream as an event; `None` for one this build does not read (another
/// layout, or damaged). (What an instance reads live goes through [`head`] and [`images`]
/// apart, to read images only for changes that may concern a subscriber.)
fn event(table: &Arc<str>, entry: &StreamId) -> Option<Event> {
    match head(table, entry)? {
        Event::Change(change) => {
            let mut change = Arc::unwrap_or_clone(change);
            (change.old, change.new) = images(entry)?;
            Some(Event::Change(Arc::new(change)))
        }
        other => Some(other),
    }
}

/// An entry's event without its images (what routing and de-duplication need: the sequence
/// number and the key); `None` for one this build does not read.
fn head(table: &Arc<str>, entry: &StreamId) -> Option<Event> {
    if entry.get::<String>("v")? != LAYOUT {
        return None;
    }
    match entry.get::<String>("kind")?.as_str() {
        "gap" => Some(Event::Gap),
        "change" => Some(Event::Change(Arc::new(Change {
            table: Arc::clone(table),
            sequence: entry.get("seq")?,
            keys: image(entry, "keys")??,
            old: None,
            new: None,
            origin: origin(entry),
        }))),
        _ => None,
    }
}

/// What a replay finds in a table's Redis stream after an entry.
pub(super) enum Held {
    /// The entries after it (at most the count asked for, through the last one asked for), each
    /// with its id; `None` for one this build does not read.
    Entries(Vec<(String, Option<Event>)>),
    /// The entry is no longer held (trimmed, or Redis came back without it): what followed it
    /// may be gone too.
    Forgotten,
}

impl RedisFeed {
    /// The entries of `table`'s (its full name) Redis stream after the entry `after`, through
    /// `until` (the end when `None`), at most `count`; `connection` is the shared one
    /// ([`RedisFeed::shared`]) unless given.
    pub(super) async fn after(
        &self,
        connection: &mut Option<MultiplexedConnection>,
        table: &Arc<str>,
        after: &str,
        until: Option<&str>,
        count: usize,
    ) -> redis::RedisResult<Held> {
        let connection = match connection {
            Some(connection) => connection,
            None => connection.insert(self.shared().await?),
        };
        let key = key(table);
        let held: StreamRangeReply = match connection.xrange_count(&key, after, after, 1).await {
            Ok(held) => held,
            Err(err) => {
                self.shared_failed(&err).await;
                return Err(err);
            }
        };
        if held.ids.is_empty() {
            return Ok(Held::Forgotten);
        }
        let read: StreamRangeReply = match connection
            .xrange_count(&key, format!("({after}"), until.unwrap_or("+"), count)
            .await
        {
            Ok(read) => read,
            Err(err) => {
                self.shared_failed(&err).await;
                return Err(err);
            }
        };
        let entries = read
            .ids
            .iter()
            .map(|entry| (entry.id.clone(), event(table, entry)))
            .collect();
        Ok(Held::Entries(entries))
    }
}

/// Where a change entry's record was read, as a relay publishes it: its shard, and a place in
/// its stream before anything (the reader makes it its own place); `None` from a relay that did
/// not say.
fn origin(entry: &StreamId) -> Option<Origin> {
    let shard: String = entry.get("shard")?;
    let stream: String = entry.get("stream")?;
    let identity = shard_marks::identity(&stream)?;
    Some(Origin {
        shard: Arc::from(shard),
        after: Arc::new(Place::of_identity(identity, 0)),
    })
}

/// A change entry's old and new images; `None` when one is damaged.
fn images(entry: &StreamId) -> Option<(Option<Item>, Option<Item>)> {
    Some((image(entry, "old")?, image(entry, "new")?))
}

/// An item field of an entry: `Some(None)` when the entry has none, `None` when it is damaged.
fn image(entry: &StreamId, name: &str) -> Option<Option<Item>> {
    match entry.get::<String>(name) {
        None => Some(None),
        Some(text) => {
            let json = serde_json::from_str(&text).ok()?;
            Some(Some(item_from_json(&json).ok()?))
        }
    }
}

/// A Redis stream entry id, `milliseconds-sequence`, as numbers to compare.
fn entry_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// What `XINFO STREAM` says about a stream: how many entries were ever added, and the newest
/// entry removed (by trimming or deletion); zeros for a stream that does not exist.
async fn stream_info(
    connection: &mut MultiplexedConnection,
    key: &str,
) -> redis::RedisResult<(u64, (u64, u64))> {
    let exists: bool = connection.exists(key).await?;
    if !exists {
        return Ok((0, (0, 0)));
    }
    let info: std::collections::HashMap<String, Value> = redis::cmd("XINFO")
        .arg("STREAM")
        .arg(key)
        .query_async(connection)
        .await?;
    let added = info
        .get("entries-added")
        .and_then(|v| redis::from_redis_value_ref::<u64>(v).ok())
        .unwrap_or(0);
    let deleted = info
        .get("max-deleted-entry-id")
        .and_then(|v| redis::from_redis_value_ref::<String>(v).ok())
        .and_then(|id| entry_id(&id))
        .unwrap_or((0, 0));
    Ok((added, deleted))
}

/// A Redis reader's place in the table's changes (see [`Place`]), moved on by each change
/// entry that says where it was read.
struct Places {
    place: Option<Place>,
    /// The floor of a place made anew: a minute before the reader started.
    floor: u64,
}

impl Places {
    /// Moves the place past `change`'s record, read from the entry `entry`; the change's
    /// origin, with the place after it.
    fn passed(&mut self, change: &Change, entry: &str) -> Option<Origin> {
        let origin = change.origin.as_ref()?;
        let stream = origin.after.identity();
        let place = match &mut self.place {
            Some(place) if place.identity() == stream => place,
            // The first entry read, or one of a new stream of the table.
            other => other.insert(Place::of_identity(stream, self.floor)),
        };
        place.set(&origin.shard, Mark::After(change.sequence.clone()));
        place.set_entry(Some(entry.to_owned()));
        Some(Origin {
            shard: Arc::clone(&origin.shard),
            after: Arc::new(place.clone()),
        })
    }

    /// Moves the place past the newest record published of each shard, as `marks` say: a place in the stream of the newest entry read, or, with none read, of
    /// the one stream the marks name.
    fn marked(&mut self, marks: &Marks) {
        let stream = match &self.place {
            Some(place) => place.identity(),
            None => {
                let mut streams = marks.streams();
                let (Some(stream), None) = (streams.next(), streams.next()) else {
                    return;
                };
                stream
            }
        };
        let place = self
            .place
            .get_or_insert_with(|| Place::of_identity(stream, self.floor));
        for (shard, last) in marks.last_of(stream) {
            place.set(shard, Mark::After(last.to_owned()));
        }
    }
}

/// Where a reader stands in a table's Redis stream.
#[derive(Debug, Clone)]
struct Position {
    /// The last entry read.
    last: String,
    /// `entries-added` when last looked at: fewer later means the stream was made anew.
    added: u64,
}

/// One table's reader over Redis, as [`super::Streams`] starts it for an instance given one.
pub(super) struct RedisReader {
    pub(super) feed: RedisFeed,
    pub(super) settings: StreamSettings,
    pub(super) outlet: Outlet,
}

impl RedisReader {
    /// Reads until nobody listens, then leaves the process's readers.
    pub(super) async fn run(self) {
        let key = key(&self.outlet.table);
        let mut backoff = Backoff::new(self.settings);
        let mut position: Option<Position> = None;
        let mut passed = Passed::new();
        let mut marked = 0;
        // The reader's place in the table's changes, from what relays published: shards they
        // published nothing of since a minute before it started are not known to it (see
        // [`Place`]'s floor).
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut place = Places {
            place: None,
            floor: started.saturating_sub(60_000),
        };
        'connect: loop {
            if self.outlet.unsubscribed() {
                break;
            }
            let mut connection = match self.feed.connect().await {
                Ok(connection) => connection,
                Err(err) => {
                    self.failed("connect", &err);
                    backoff.wait().await;
                    continue;
                }
            };
            match self
                .place(
                    &mut connection,
                    &key,
                    position.as_mut(),
                    &mut passed,
                    &mut place,
                )
                .await
            {
                Ok(Some(start)) => position = Some(start),
                Ok(None) => {}
                Err(err) => {
                    self.failed("XINFO", &err);
                    backoff.wait().await;
                    continue;
                }
            }
            let Some(at) = position.as_mut() else {
                continue;
            };
            loop {
                if self.outlet.unsubscribed() {
                    break 'connect;
                }
                let asked = self.outlet.asked();
                let options = StreamReadOptions::default()
                    .block(BLOCK.as_millis() as usize)
                    .count(BATCH);
                let read: redis::RedisResult<Option<StreamReadReply>> = connection
                    .xread_options(&[&key], &[&at.last], &options)
                    .await;
                let entries = match read {
                    Ok(reply) => reply
                        .into_iter()
                        .flat_map(|r| r.keys)
                        .flat_map(|k| k.ids)
                        .collect::<Vec<_>>(),
                    Err(err) => {
                        self.failed("XREAD", &err);
                        backoff.wait().await;
                        continue 'connect;
                    }
                };
                backoff.reset();
                let full = entries.len() >= BATCH;
                // The newest entry's age: its id holds the time Redis appended it, in ms.
                if let Some((ms, _)) = entries.last().and_then(|e| entry_id(&e.id)) {
                    let appended = std::time::UNIX_EPOCH + Duration::from_millis(ms);
                    let lag = std::time::SystemTime::now()
                        .duration_since(appended)
                        .unwrap_or_default();
                    self.outlet.metrics.stream_lag(&self.outlet.table, lag);
                }
                for entry in &entries {
                    at.last.clone_from(&entry.id);
                    // The images are read only for a change that may concern a subscriber
                    // here: routing by the key decides most without them.
                    match head(&self.outlet.table, entry) {
                        Some(Event::Change(change)) => {
                            let origin = place.passed(&change, &entry.id);
                            if passed.news(&change) && self.outlet.wanted(&change.keys) {
                                let mut change = Arc::unwrap_or_clone(change);
                                change.origin = origin;
                                if let Some((old, new)) = images(entry) {
                                    (change.old, change.new) = (old, new);
                                    self.outlet.send(change);
                                } else {
                                    tracing::warn!(
                                        table = %self.outlet.table,
                                        entry = %entry.id,
                                        "a Redis entry whose images cannot be read was skipped"
                                    );
                                }
                            }
                        }
                        Some(Event::Gap | Event::Expired) => self.outlet.gap(),
                        None => tracing::warn!(
                            table = %self.outlet.table,
                            entry = %entry.id,
                            "a Redis entry that is no change of this layout was skipped"
                        ),
                    }
                }
                // A full batch may mean this reader fell behind past what Redis keeps.
                if full {
                    match self
                        .place(&mut connection, &key, Some(at), &mut passed, &mut place)
                        .await
                    {
                        Ok(_) => {}
                        Err(err) => {
                            self.failed("XINFO", &err);
                            continue 'connect;
                        }
                    }
                }
                let at = place.place.as_ref().map(|p| {
                    let mut p = p.clone();
                    p.set_entry(Some(at.last.clone()));
                    Arc::new(p)
                });
                if let Some(at) = &at {
                    self.outlet.placed(at);
                }
                if asked > marked {
                    self.outlet.mark(asked, at.as_ref());
                    marked = asked;
                }
            }
        }
        self.outlet.leave();
    }

    /// Where to read from: at the first connection, after the stream's newest entry (a new
    /// [`Position`]), with the items' last changes among the [`LOOK_BACK`] entries before it
    /// remembered in `passed`; later, on from `at`, telling subscribers of a gap when entries
    /// after it are gone (the stream trimmed past it, or made anew).
    async fn place(
        &self,
        connection: &mut MultiplexedConnection,
        key: &str,
        at: Option<&mut Position>,
        passed: &mut Passed,
        place: &mut Places,
    ) -> redis::RedisResult<Option<Position>> {
        let (added, deleted) = stream_info(connection, key).await?;
        match at {
            None => {
                // The newest entries and where the relays stand in each shard, at one instant.
                let (newest, marks) =
                    shard_marks::snapshot(connection, (key, &self.outlet.table), LOOK_BACK).await?;
                let last = newest
                    .ids
                    .first()
                    .map_or_else(|| "0-0".to_owned(), |e| e.id.clone());
                // Oldest first, so that each item's last change is remembered.
                for entry in newest.ids.iter().rev() {
                    if let Some(Event::Change(change)) = head(&self.outlet.table, entry) {
                        passed.news(&change);
                        place.passed(&change, &entry.id);
                    }
                }
                place.marked(&marks);
                Ok(Some(Position { last, added }))
            }
            Some(at) => {
                let last = entry_id(&at.last).unwrap_or((0, 0));
                // The last entry read is gone when Redis came back without it (no persistence).
                let held: StreamRangeReply = if at.last == "0-0" {
                    StreamRangeReply::default()
                } else {
                    connection.xrange_count(key, &at.last, &at.last, 1).await?
                };
                let forgotten = at.last != "0-0" && held.ids.is_empty();
                if forgotten || added < at.added || deleted > last {
                    tracing::warn!(
                        table = %self.outlet.table,
                        "entries of the table's Redis stream were lost before they were read"
                    );
                    self.outlet.gap();
                    // A stream made anew holds only entries newer than the lost ones: all are
                    // news. One trimmed past `at` is read on from there, its oldest kept next.
                    if forgotten || added < at.added {
                        at.last = "0-0".to_owned();
                    }
                }
                at.added = added;
                Ok(None)
            }
        }
    }

    fn failed(&self, call: &'static str, err: &redis::RedisError) {
        self.outlet.metrics.stream_call_failed(call);
        tracing::warn!(
            table = %self.outlet.table,
            call,
            error = %err,
            "a Redis call failed"
        );
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::types::AttributeValue;

    use super::*;

    fn entry_of(fields: Vec<(&'static str, String)>) -> StreamId {
        StreamId {
            id: "1-0".to_owned(),
            map: fields
                .into_iter()
                .map(|(k, v)| (k.to_owned(), Value::BulkString(v.into_bytes())))
                .collect(),
            ..StreamId::default()
        }
    }

    #[test]
    fn changes_and_gaps_read_back_as_published() {
        let table: Arc<str> = Arc::from("t_Purchases");
        let item = crate::dynamo::Item::from([
            ("userId".to_owned(), AttributeValue::S("u#1".to_owned())),
            (
                "amount".to_owned(),
                AttributeValue::N("12345678901234567890123456789.123456789".to_owned()),
            ),
        ]);
        for change in [
            Change {
                table: Arc::clone(&table),
                sequence: "4900000000000000000000000000000000001".to_owned(),
                keys: item.clone(),
                old: None,
                new: Some(item.clone()),
                origin: Some(Origin {
                    shard: Arc::from("shardId-00000001764658230011-a7b7e6f5"),
                    after: Arc::new(Place::new(
                        "arn:aws:dynamodb:ddblocal:000000000000:table/t",
                        0,
                    )),
                }),
            },
            Change {
                table: Arc::clone(&table),
                sequence: "7".to_owned(),
                keys: item.clone(),
                old: Some(item.clone()),
                new: None,
                origin: None,
            },
        ] {
            let published = Event::Change(Arc::new(change));
            assert_eq!(event(&table, &entry_of(entry(&published))), Some(published));
        }
        assert_eq!(
            event(&table, &entry_of(entry(&Event::Gap))),
            Some(Event::Gap)
        );
        // Another layout, or a damaged entry, is no event.
        let mut other = entry(&Event::Gap);
        other[0].1 = "2".to_owned();
        assert_eq!(event(&table, &entry_of(other)), None);
        let damaged = vec![
            ("v", "1".to_owned()),
            ("kind", "change".to_owned()),
            ("seq", "1".to_owned()),
            ("keys", "{not json".to_owned()),
        ];
        assert_eq!(event(&table, &entry_of(damaged)), None);
    }

    fn change_of(at: &str, sequence: &str) -> Change {
        Change {
            table: Arc::from("Notes"),
            sequence: sequence.to_owned(),
            keys: crate::dynamo::Item::from([
                ("owner".to_owned(), AttributeValue::S("alice".to_owned())),
                ("at".to_owned(), AttributeValue::N(at.to_owned())),
            ]),
            old: None,
            new: None,
            origin: None,
        }
    }

    #[test]
    fn each_items_changes_pass_once_and_in_order() {
        let mut passed = Passed::new();
        assert!(passed.news(&change_of("1", "000000000000000000004")));
        // Published again by the other relay.
        assert!(!passed.news(&change_of("1", "000000000000000000004")));
        assert!(passed.news(&change_of("1", "000000000000000000007")));
        // A relay behind the other publishes an older change of the item after a newer one.
        assert!(!passed.news(&change_of("1", "000000000000000000006")));
        assert!(!passed.news(&change_of("1", "000000000000000000004")));
        // Another item's older change is news: the order is each item's.
        assert!(passed.news(&change_of("2", "000000000000000000005")));
        assert!(passed.news(&change_of("1", "000000000000000000010")));
        // The same keys in any order are the same item; a key's type tells items apart.
        let mut reordered = change_of("2", "000000000000000000005");
        let mut pairs: Vec<_> = reordered.keys.into_iter().collect();
        pairs.reverse();
        reordered.keys = pairs.into_iter().collect();
        assert_eq!(
            identity(&reordered.keys),
            identity(&change_of("2", "1").keys)
        );
        let mut typed = change_of("2", "1");
        typed
            .keys
            .insert("at".to_owned(), AttributeValue::S("2".to_owned()));
        assert_ne!(identity(&typed.keys), identity(&change_of("2", "1").keys));
    }

    #[test]
    fn entry_ids_compare_as_numbers() {
        assert!(entry_id("10-0") > entry_id("9-5"));
        assert!(entry_id("9-10") > entry_id("9-9"));
        assert_eq!(entry_id("x"), None);
    }
}
